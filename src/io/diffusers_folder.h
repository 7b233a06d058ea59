// Locating weight files in diffusers folders.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/model_layout.h"

namespace ggdiff {

// The files a model folder should be loaded from, each with the role prefix it gets.
struct FolderPart {
    std::string path;
    std::string prefix;
};

bool is_directory(const std::string& path);
bool is_regular_file(const std::string& path);

// Weight files of one component folder: diffusion_pytorch_model / model / pytorch_model, plain
// or .fp16, single or sharded (*.index.json); .safetensors, else PyTorch .bin. Errors name what
// was found.
Result<std::vector<std::string>> component_weight_files(const std::string& dir);

// The parts to load for a folder given under `prefix`: a diffusers pipeline
// (model_index.json) or a single component folder. A pipeline whose "_class_name" one of
// `layouts` declares is routed as that family says; others by their folders (unet/ or
// transformer/, text_encoder_2/, text_encoder_3/, a language-model text_encoder/).
Result<std::vector<FolderPart>> diffusers_folder_parts(const std::string& dir,
                                                       const std::string& prefix,
                                                       const ModelLayouts& layouts = {});

}  // namespace ggdiff
